"""The composition root: the `holistic` command and the processes it wires together (gateway, metric
family workers, janitor, dashboard, clients). The only package that imports all of them; nothing
imports it."""
