"""Generated gRPC stubs of proto/telha/v1/telha.proto: do not edit.

Regenerate with `.venv/bin/python workers/gen_stubs.py` (setup-venv.sh does it).
"""
