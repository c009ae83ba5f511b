"""The long-question eval: real issues as queries, the files their fixes changed as targets."""
