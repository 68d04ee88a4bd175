"""Small, named adapters that let external engines (vLLM, verl) run where their own releases do not.

Each module is pinned to the engine version it was written for and refuses to load on any other;
on the platforms the engines support themselves nothing here is applied.
"""
