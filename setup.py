"""Package metadata comes from settings.ini (nbdev 2 layout); this file only reads it."""
from configparser import ConfigParser
from pathlib import Path

import setuptools

config = ConfigParser(delimiters=["="])
config.read(Path(__file__).parent / "settings.ini", encoding="utf-8")
cfg = config["DEFAULT"]

licenses = {"apache2": "Apache-2.0"}
statuses = ["1 - Planning", "2 - Pre-Alpha", "3 - Alpha", "4 - Beta", "5 - Production/Stable"]
lic = licenses[cfg["license"]]
min_python = cfg["min_python"]


def _requirements(key):
    return cfg.get(key, "").split()


setuptools.setup(
    name=cfg["lib_name"],
    version=cfg["version"],
    description=cfg["description"],
    long_description=(Path(__file__).parent / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    author=cfg["author"],
    author_email=cfg["author_email"],
    url=cfg["git_url"],
    license=lic,
    keywords=cfg["keywords"],
    classifiers=[
        "Development Status :: " + statuses[int(cfg["status"])],
        "Intended Audience :: " + cfg["audience"].title(),
        "Natural Language :: " + cfg["language"].title(),
        "Programming Language :: Python :: 3",
    ],
    python_requires=f">={min_python}",
    packages=setuptools.find_packages(include=["deid_nb", "deid_nb.*"]),
    include_package_data=True,
    package_data={"deid_nb": ["resources/*"]},
    install_requires=_requirements("requirements"),
    extras_require={**(extras := {k.removesuffix("_requirements"): _requirements(k) for k in cfg if k.endswith("_requirements")}),
                    "all": sorted({r for k, rs in extras.items() if k not in _requirements("extras_outside_all") for r in rs})},
    entry_points={
        "console_scripts": cfg.get("console_scripts", "").split(),
        "nbdev": [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"],
    },
    zip_safe=False,
)
