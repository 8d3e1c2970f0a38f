#!/bin/bash
# The stand-in's zkServer.sh knows one verb, status, as the compose file's
# health check uses it: the server answers srvr with its mode.
if [ "${1:-}" != status ]; then echo "stand-in zkServer.sh: only 'status' is supported" >&2; exit 2; fi
printf srvr | nc -w 3 127.0.0.1 2181 | grep -q '^Mode: '
