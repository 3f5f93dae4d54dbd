"""A LangGraph checkpointer and store on convostore."""
