"""An OpenAI Agents SDK Session on convostore."""
