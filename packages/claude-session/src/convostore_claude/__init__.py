"""A Claude Agent SDK SessionStore on convostore."""
