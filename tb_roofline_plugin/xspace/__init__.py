"""Reading profiles, the lowest layer above ``protos``.

Finding ``<host>.xplane.pb`` files in a logdir or on the command line (``discovery``,
``sources``), decoding only the planes an analysis needs (``profile_reader``) and a line's
events as numpy columns (``event_table``, with the optional C decoder ``_wire.c``). Imports
only ``protos`` and the leaf modules at the top of the package (``errors``, ``metadata``,
``units``, ``wording``).
"""
