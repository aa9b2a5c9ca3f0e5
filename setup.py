"""Packaging for tb-roofline-plugin: a TensorBoard roofline-model plugin."""

from pathlib import Path

from setuptools import Extension, find_packages, setup

HERE = Path(__file__).parent

setup(
    name="tb-roofline-plugin",
    version="0.1.0",
    description="Roofline model of ML profiles (XSpace) for TensorBoard, XProf-compatible.",
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    python_requires=">=3.9",
    packages=[
        *find_packages(include=["tb_roofline_plugin", "tb_roofline_plugin.*"]),
        "tb_roofline_plugin.frontend",
    ],
    # The frontend lives at the top level (`frontend/`) and ships inside the package.
    package_dir={"tb_roofline_plugin.frontend": "frontend"},
    # The compiled event decoder is optional: without a compiler the install still works
    # and event_table.py decodes with numpy and protobuf instead.
    ext_modules=[
        Extension("tb_roofline_plugin._wire", ["tb_roofline_plugin/_wire.c"], optional=True)
    ],
    package_data={
        "tb_roofline_plugin": ["http_api.md"],
        "tb_roofline_plugin.frontend": ["*.js", "*.css"],
    },
    install_requires=[
        "tensorboard>=2.21",
        "werkzeug>=1.0.1",
        "protobuf>=6.31.1,<8",
        "numpy>=1.21",
        "plotly>=5",
    ],
    extras_require={
        "test": [
            "pytest>=7",
            "hypothesis>=6",
            "playwright>=1.40",
            "jax[cpu]>=0.4.30",
            # protoc 31.x: its gencode (6.31.1) loads under every protobuf that
            # tensorboard>=2.21 accepts.
            "grpcio-tools==1.75.1",
            "ruff>=0.6",
            # Remote logdirs go through TensorBoard's fsspec support; tests use memory://.
            "fsspec>=2023.1",
            "dask[distributed]>=2023.1",
        ],
        "remote": ["fsspec>=2023.1", "gcsfs>=2023.1"],
        "dask": ["dask[distributed]>=2023.1"],
    },
    entry_points={
        "console_scripts": ["tb-roofline = tb_roofline_plugin.cli:main"],
        "tensorboard_plugins": ["roofline = tb_roofline_plugin.loader:RooflineLoader"],
    },
)
