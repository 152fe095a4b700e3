"""``make demo``: the seed JobFlow running to Succeed on the local control plane, watched live.

``procfile`` runs the project's Procfile (the handler under gunicorn and the event source) as background
processes with logs next to the cluster's; ``progress`` draws a JobFlow's progress in the terminal; ``__main__``
puts it together: cluster, Procfile, the seed example, the live view, and what to try next with kubectl.
"""
