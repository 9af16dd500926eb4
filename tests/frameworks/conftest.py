"""Frameworks whose pins conflict with the main test environment are tested in venvs of their own
(``.ci/frameworks``): their test modules are collected only where the framework is installed."""

from __future__ import annotations

import pytest

from ..separate import not_installed

#: The contract's cases assert in a module of their own (each framework's test module runs them): pytest shows
#: their failures as it shows a test module's.
pytest.register_assert_rewrite("tests.frameworks.contract")

#: test module -> the framework it needs
SEPARATE = {
    "test_crewai.py": "crewai",
    "test_llama_index.py": "llama_index.llms.openai",
    "test_llama_index_rag.py": "llama_index.embeddings.openai",
    "test_dspy.py": "dspy",
    "test_autogen.py": "autogen_ext.models.openai",
    "test_claude_agent_sdk.py": "claude_agent_sdk",
    "test_instructor.py": "instructor",
    "test_semantic_kernel.py": "semantic_kernel",
}


collect_ignore = not_installed(SEPARATE)
