"""`python -m rag_server.cli`, which the `bld` launcher runs."""

from rag_server.cli import main

main()
