"""The API's routes, one module per resource: ``principal`` (who is calling, ``GET /me``),
``conversations`` (conversations and their messages), ``events`` (a conversation's live
events), ``memory`` (memory stores, their entries and versions). ``create_app`` assembles
them; ``common`` holds what they share (responses, path parameters, the error table)."""
