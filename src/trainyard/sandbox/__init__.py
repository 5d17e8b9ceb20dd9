"""The isolation boundary of every process that runs user code: namespaces, Landlock, seccomp, rlimits.

Beside core (it imports only core), torch-free: the server, the cluster ranks and the sandboxed
processes themselves import it.
"""
