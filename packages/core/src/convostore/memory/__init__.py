"""Memory stores: repositories of versioned text entries by path (``stores``), attached to
conversations (``attachments``), and the section of a prompt that lists them (``prompt``).
The methods are ``ConversationStore``'s."""
