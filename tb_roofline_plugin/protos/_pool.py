"""A descriptor pool of our own for the generated messages.

The message names (``tensorflow.profiler.XSpace``, ``...roofline_model.*``) are
the same as XProf's. Registering them in protobuf's default pool would clash
with XProf's own modules when both plugins run in one TensorBoard process, so
every generated module of this package adds its file to this pool instead.
"""

from google.protobuf import descriptor_pool

POOL = descriptor_pool.DescriptorPool()
