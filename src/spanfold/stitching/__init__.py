"""Stitching, at the ground floor: one trace per agent run that opens no agent span, decided alike at the source and
in the fold.

* :mod:`.fingerprints`: the one way to fingerprint a semconv message (per part, so providers that group parts into
  messages differently on the way in and out still match);
* :mod:`.evidence`: the rule (which live conversation a call or tool run continues, or none) and the index of what
  each live conversation holds;
* :mod:`.live`: the live conversations of one side: their evidence, the tool calls they wait on, their idle windows
  (:mod:`.idle_windows`), and closing them;
* :mod:`.contexts`: where a call was made (the source's execution-context evidence);
* :mod:`.pairing`: tool calls waiting for the run that answers them.

The source (:mod:`spanfold.stitching.conversations`) decides for the calls of its own process and puts the
decision on the span (its parent, and ``spanfold.stitched``); the fold (:mod:`spanfold.exporter.runs.stitch`) follows
those spans by their trace id and decides, by the same rule, only for other producers' un-parented calls. Nothing
here imports OpenTelemetry or either half.
"""
