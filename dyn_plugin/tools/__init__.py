"""The tools wing: what measures the library, never imported by it.

* :mod:`.cli` — the ``dyn-plugin`` command line (``python -m dyn_plugin.tools.cli``);
* :mod:`.validate` — our backends against the references (``dyn-plugin validate``),
  and :mod:`.reporting`, its Markdown report and figures;
* :mod:`.bench` — time per state against pinocchio and pybullet (``dyn-plugin bench``);
* :mod:`.machine` and :mod:`.output` — what the figures were measured on, and how the
  tools write.

Everything here imports the core (``dyn_plugin`` outside ``tools/``); no core module
imports anything here.
"""
