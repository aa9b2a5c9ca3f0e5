"""TensorBoard serving: the entry point, the HTTP handlers and what each route does.

``loader`` (the entry point TensorBoard imports: flags, lazy loading), ``plugin`` (thin
HTTP handlers), ``service`` (what each route does, without HTTP), ``cache`` (the bounded
single-flight cache), ``convert`` and ``stats_store`` (converting hosts, in worker processes
or ahead of time into a cache folder); the API is documented in ``http_api.md``. May import
every layer below (``render`` down to ``xspace``), ``protos`` and the leaf modules; nothing
below imports it.
"""
