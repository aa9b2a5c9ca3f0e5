"""Text out of a roofline model: every output format.

``datatable`` (XProf-compatible DataTable JSON and CSV), ``json_text`` (fast JSON text,
written column by column and in pieces; rows written from the columns by the optional
compiled writer ``_text.c``), ``export`` (our complete json form and the
``export`` command's formats) and ``summary`` (the terminal summary). Imports only the
layers below (``roofline`` down to ``xspace``), ``protos`` and the leaf modules.
"""
