"""The replica tests: their pair of servers is the session fixture ``pair`` (tests/conftest.py)."""
