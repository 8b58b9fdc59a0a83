"""One ``harms`` command split across processes and machines with Hugging Face Accelerate (data
parallel, multi-node), in three modules whose imports go one way (``launch`` -> ``worker`` <- ``split``):

- :mod:`helpers.distributed.launch`: the launcher's side, called by the CLI only
  (:func:`~helpers.distributed.launch.run_command`): the checks before a launch
  (:func:`~helpers.distributed.launch.preflight`), the ``accelerate launch`` command line
  (:func:`~helpers.distributed.launch.launch_command`), starting this machine's workers and waiting for
  their status files (:func:`~helpers.distributed.launch.launch`), one line on their exchanges
  (:func:`~helpers.distributed.launch.exchange_summary`);
- :mod:`helpers.distributed.worker`: the runtime of one worker process: the run's settings
  (:class:`~helpers.distributed.worker.Cluster`), its place in the run, rendezvous store and heartbeat
  (``_World``), which process writes the outputs (:func:`~helpers.distributed.worker.is_main`), models
  dealt round-robin (:func:`~helpers.distributed.worker.mine`, :func:`~helpers.distributed.worker.alone`,
  :func:`~helpers.distributed.worker.barrier`), the worker's device and status
  (:func:`~helpers.distributed.worker.run_worker`); it is also where transformers' ``save_pretrained``
  is patched on workers (``_save_on_every_process``, called when a worker joins the process group);
- :mod:`helpers.distributed.split`: splitting one job between the processes: the broadcast, the
  settings check and the exactly-once gather that :func:`helpers.cache.cached_rows` calls
  (:func:`~helpers.distributed.split.shard`), shares equal in characters
  (:func:`~helpers.distributed.split.share_bounds`).

How a run goes: every ``harms`` command that scores (``score``, ``safety``, ``fill``, ``report``, ``book``)
takes ``--processes N`` (per machine) and ``--machines M --machine-rank R --main-ip IP --main-port P``.
The same command is started once per machine (by hand, or by ``srun`` under Slurm: docs/SCALING.md).
Each starts ``accelerate launch --multi_gpu --num_machines M --machine_rank R --main_process_ip IP
--main_process_port P --num_processes M*N -m helpers <the command>``, so the command runs as M*N
copies, one per process: SPMD, like torchrun. The copies agree at every cached computation
(:func:`helpers.cache.cached_rows` calls :func:`~helpers.distributed.split.shard`). Work between two
cached computations (a bootstrap, a table) is repeated by every copy, and only process 0 writes the
outputs. On CPU the process group is gloo (``PartialState(cpu=True)``), on CUDA nccl with one process
per GPU.

This package's ``__init__`` imports nothing: import the module that owns what you call.
"""
