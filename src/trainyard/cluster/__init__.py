"""Cluster mode: a model job's ranks run as Ray workers placed anywhere on a Ray cluster.

It is another way to *launch* the one training entry point (``python -m trainyard.training.run
JOBDIR``), not a second training loop. The runner starts ``python -m trainyard.cluster.launcher
JOBDIR`` instead of torch.distributed.run; the launcher asks Ray for a placement group of one
bundle per rank, starts one actor per bundle (`worker.RankWorker`), and each actor runs the
entry point as its child process with the environment torch.distributed.run would give it
(RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT: env:// rendezvous). Everything else
(sharding, reductions, rank 0's events and checkpoints, resume) is the training package's.

Only the launcher process and the server's agent process (agent.py: the server's one connection
to Ray, which it can lose and make again) import ray, and only when TRAINYARD_CLUSTER=ray; the
modules here import it lazily, inside functions.
"""
