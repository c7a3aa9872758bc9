"""What the tests and the benchmarks share: the real mail stack, a private
PostgreSQL cluster, the referee's desk, servers and clients to drive."""
