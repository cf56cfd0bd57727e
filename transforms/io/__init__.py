"""The backends outputs are written to and requests read from: files, BigQuery, Pub/Sub.

Each audit-row backend implements `transforms.io.base.AuditSink`;
`transforms.sinks` chooses among them from the flags.
"""
