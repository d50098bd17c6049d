"""The throughput phase: the load client (client.py), its SSE reader on the hot path (sse.py), its own HTTP/1.1
client (stream_http.py) and the scenario statistics (stats.py). Imports records and phases/retries.py only."""
