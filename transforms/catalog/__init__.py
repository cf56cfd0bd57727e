"""The catalog providers of the pack step, one module per `--catalog_mode` backend.

Each implements `transforms.catalog.base.CatalogProvider`;
`transforms.catalog.factory.catalog_provider` chooses among them.
"""
