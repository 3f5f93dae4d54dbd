"""``python -m convostore_server``: the ``convostore-server`` command."""

from .cli import main

main()
