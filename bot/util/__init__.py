"""What every layer uses: the error tree (``errors``), asyncio helpers (``aio``) and redaction (``redact``)."""
