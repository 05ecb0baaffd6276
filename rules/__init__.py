"""The fault tree as data: one TOML document per rule, ``<AREA>/<ID>.toml``.

Installed as the package ``msdoctor_rules`` so the catalogue is found from a wheel too.
"""
