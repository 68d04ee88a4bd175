"""The sandbox's inside: every module that runs in a sandbox worker's interpreter, and in the
candidate and test children the worker forks from it: the processes that hold or test untrusted
code, under the isolation layers, never the trainer's process.

Inside (this package): the worker (``harness.py``; its relay ``relay.py``; the layers it
applies, ``isolation.py``, and probes, ``probing.py``), the candidate child (``child.py``; which
of its objects it shares with the test, ``sharing.py``; ``script.py`` on stdin/stdout rows) and
the test child (``testchild.py``, its ``proxy.py``), and what the children share: ``wire.py``
(values between them), ``frames.py`` (the frames that carry them), ``claims.py`` (exceptions
as claims the test child checks) and ``tolerance.py`` (the one float tolerance; the trainer's
stdout checkers use it too). Trainer
side (``rlvr.sandbox``): the pool and its worker handle (``pool.py``, ``worker.py``), the choice
of interpreter (``interpreter.py``), parsing a row's tests (``plans.py``) and turning what came
back into a verdict (``checks.py``, ``checkers.py``).

The rule, kept by ``tests/test_structure.py``: these modules import the standard library and
each other (relatively), nothing else; the trainer side may import them, never the reverse. The
worker's interpreter may be another Python than the trainer's and need not have rlvr installed:
``worker.py`` starts it with ``-I -S`` and loads this package from its folder under the name
``inside`` (``rlvr/__init__`` and the trainer side never run there) and puts no folder on
``sys.path``, so no trainer-side module can be imported there. Keep this file free of imports:
the worker runs it first.
"""
