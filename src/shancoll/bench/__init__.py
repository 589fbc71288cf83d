"""shancoll's lab bench: the benchmark tools, apart from the library.

``import shancoll`` never imports this package, and importing it imports
none of its modules (each is loaded when asked for):

``series``     what is measured, in plain Python: collectives, distributions,
               sizes, series labels
``kernel``     the timing kernel, run inside each MPI job
               (``mpiexec -n P python -m shancoll.bench.kernel ...``)
``sweep``      benchmark sweeps: plans and launches the kernel's jobs, writes
               the results (``python -m shancoll.bench.sweep --quick``: ``make bench``)
``plot``       figures of a sweep's results (``python -m shancoll.bench.plot``)
``report``     the rule table of ``algorithm="auto"`` and the generated docs sections
``baselines``  the native collectives of MPICH, Open MPI and Intel MPI as series
``mpi_envs``   one virtualenv per MPI library (``python -m shancoll.bench.mpi_envs``)
"""
