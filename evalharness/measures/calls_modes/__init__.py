"""Calls under load and streamed (issue 60, 2): the calls tasks' cases answered streamed and not, one request at a
time and at the operating concurrency, each mode paired per case against its other mode; a cell whose valid-call
rate falls under load or when streamed is flagged with its figures."""
