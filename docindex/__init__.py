"""docindex: turn folders of documents into a searchable local knowledge base."""

__version__ = "0.2.0"

__all__ = ["__version__"]
