"""Record CrewAI crews into convostore conversations and continue them."""
