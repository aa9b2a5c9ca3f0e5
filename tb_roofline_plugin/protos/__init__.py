"""Generated protobuf modules (see ``generate.py``); messages live in a private pool."""
