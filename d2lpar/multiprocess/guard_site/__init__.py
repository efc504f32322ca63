"""Not imported: the folder the launcher puts on a job's ``PYTHONPATH``.

It holds the ``sitecustomize`` that installs :mod:`d2lpar.multiprocess.guard`
in every Python process of the job (a package only so that it ships).
"""
