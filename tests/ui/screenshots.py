"""Take the README's screenshots of ``spanfold ui`` (docs/img/ui-*.png) from real runs: ``spanfold demo`` on several
providers' APIs, and runs recorded by ``spanfold.init()`` with default settings in a fresh process (the real openai
SDK over real HTTP to the mock server: one whose model call fails, a long one, two that differ, a LangChain RAG
agent's); the real command,
Debian's chromium through Playwright. Not run in CI:

    PYTHONPATH=src:. python tests/ui/screenshots.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import expect, sync_playwright
from tests.ui.conftest import CHROMIUM, UiServer

OUT = Path(__file__).resolve().parents[2] / "docs" / "img"
ROOT = Path(__file__).resolve().parents[2]
PROVIDERS = ("openai", "anthropic", "gemini", "openai-responses")

#: Recorded in a fresh process: a failing call, a long coding run, two weather runs that part at the third call, and
#: a LangChain RAG agent (a retriever over an in-memory store, the embeddings from the mock server).
RECORD = '''
import openai, pytest, spanfold
from spanfold.testing import MockLLMServer, Reply, ToolCallSpec
from tests.ui import agents

@spanfold.tool
def read_file(path: str) -> str:
    """A file of the project."""
    return f"# {path}\\n" + "".join(f"def f{i}():\\n    return {i}\\n" for i in range(40))

@spanfold.tool
def run_tests(path: str) -> str:
    """The project's tests."""
    return "collected 12 items\\n" + "." * 11 + "F\\nFAILED tests/test_m.py::test_edge" if "m7" in path else "12 passed"

agents.TOOLS.update(read_file=read_file, run_tests=run_tests)
spanfold.init()
with MockLLMServer() as server:
    client = agents.client(server)
    markdown = "**Paris**: 18°C, sunny; **Tokyo**: 24°C, cloudy.\\n\\n* in Fahrenheit, Paris: `64.4°F`"
    server.script(*agents.WEATHER_REPLIES[:2], Reply.text(markdown))
    with spanfold.agent("paris-bot", user_id="u-42", tags=["beta"], prompt=("weather", "v3")):
        agents.run(client)
    server.script(
        agents.WEATHER_REPLIES[0],
        Reply.tools([ToolCallSpec("convert_temperature", {"celsius": 24})]),
        Reply.text("Tokyo: 24°C, cloudy; Paris: 18°C, sunny. In Fahrenheit, 24°C is 75.2°F."),
    )
    with spanfold.agent("weather-bot-tokyo", user_id="u-7", tags=["beta", "vip"], prompt=("weather", "v4")):
        agents.run(client)
    for k in range(1, 13):
        calls = [ToolCallSpec(name, {"path": f"src/m{k}.py"}) for name in ("read_file", "run_tests")]
        server.script(Reply.tools(calls))
    answer = "## Done\\n\\n* **12** modules read\\n* one failing test: `tests/test_m.py::test_edge`"
    server.script(Reply.text(answer))
    with spanfold.agent("coder"):
        agents.run(client, "Find the failing test.", system="You are a careful coding agent.", max_steps=20)
    from langchain_core.documents import Document
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_openai import ChatOpenAI, OpenAIEmbeddings

    embeddings = OpenAIEmbeddings(model="text-embedding-3-small", base_url=server.base_url, api_key="k",
                                  check_embedding_ctx_length=False, max_retries=0)
    store = InMemoryVectorStore(embeddings)
    facts = {"paris": "Paris is the capital of France, on the Seine.", "bananas": "Bananas are a yellow fruit.",
             "tokyo": "Tokyo is the capital of Japan."}
    store.add_documents([Document(text, id=key) for key, text in facts.items()])  # indexing: a run of its own
    llm = ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="k", max_retries=0)
    server.script(Reply.text("Paris is the capital of France, on the Seine."))
    question = "What is the capital of France?"
    with spanfold.agent("rag-bot", user_id="u-42"):
        found = store.similarity_search_with_score(question, k=2)
        context = "\\n".join(doc.page_content for doc, _score in found)
        llm.invoke([SystemMessage("Answer from the context:\\n" + context), HumanMessage(question)])
    server.script(Reply.error(500, "upstream exploded", should_retry=False))
    try:
        with spanfold.agent("failing-bot"):
            agents.run(client, "hi", system=None)
    except openai.InternalServerError:
        pass
assert spanfold.flush(timeout=30)
'''


def record(traces: Path) -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    for provider in PROVIDERS:
        demo = [sys.executable, "-m", "spanfold", "demo", "--provider", provider, "-o", str(traces)]
        subprocess.run(demo, check=True, capture_output=True, env=env, timeout=120)
    run = {**env, "SPANFOLD_OUTPUT": str(traces)}
    subprocess.run([sys.executable, "-c", RECORD], check=True, capture_output=True, env=run, timeout=180, cwd=ROOT)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        traces = Path(tmp) / "traces"
        record(traces)
        server = UiServer([traces])
        try:
            server.wait_total(len(PROVIDERS) + 6)
            ids = {r["name"]: r["id"] for r in server.json("/api/runs")["runs"]}
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.goto(server.url)
                expect(page.locator("#runs tr.run")).to_have_count(len(PROVIDERS) + 6)
                page.wait_for_selector("#chart svg")
                page.screenshot(path=str(OUT / "ui-runs.png"))
                page.goto(f"{server.url}#/run/{ids['paris-bot']}/conversation/s4")
                page.wait_for_selector("#run-body .selected")
                page.screenshot(path=str(OUT / "ui-run.png"), full_page=True)
                page.goto(f"{server.url}#/run/{ids['coder']}/timeline/s6")
                page.wait_for_selector("#step-details .step-output")
                page.screenshot(path=str(OUT / "ui-timeline.png"), full_page=True)
                page.goto(f"{server.url}#/run/{ids['rag-bot']}/timeline/s1")
                page.wait_for_selector("#step-details table.step-documents")
                page.screenshot(path=str(OUT / "ui-rag.png"), full_page=True)
                page.goto(f"{server.url}#/compare/{ids['paris-bot']}/{ids['weather-bot-tokyo']}")
                page.wait_for_selector("#deltas")
                page.screenshot(path=str(OUT / "ui-compare.png"), full_page=True)
                browser.close()
        finally:
            server.stop()
    print(f"screenshots in {OUT}")


if __name__ == "__main__":
    main()
