"""How a JobFlow is shown to a person, as ``kubectl jobflow`` and the dashboard both show it.

Pure functions of the objects as read from the cluster (and of the time now, passed in): no I/O, no client, so
the command line and the dashboard say the same thing in the same words. One concern per module:

* :mod:`display.facts`: what a JobFlow looks like right now, flow by flow (phases, waits, forecasts, fan-out
  counts, pods), and the text of its queue, cost and pods;
* :mod:`display.times`: ages, durations and forecasts as kubectl prints them;
* :mod:`display.drawing`: its DAG as text, DOT and Mermaid, and each flow's colour and label;
* :mod:`display.svg`: its DAG as a standalone SVG (``kubectl jobflow graph -o svg``);
* :mod:`display.layout`: where each node of its DAG goes on the dashboard's page;
* :mod:`display.timeline`: where it spent its time, vcjob by vcjob, and its critical path.

It may import the core (:mod:`jobflow_core`), nothing else of this repository.
"""
