"""The frameworks' retrievers read into typed retrievals (:mod:`spanfold.instrumentation.invocations.retrievals`), one
module per framework: LangChain's retrievers (:mod:`.langchain`), LlamaIndex's retrievers and node postprocessors
(:mod:`.llama_index`). Each is part of its framework's instrumentor's table."""
