"""evalharness: serve a model under each candidate engine configuration, measure it, and report what each costs."""

__version__ = "0.1.0"
