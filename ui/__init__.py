"""Dashboard helpers for the PPD Explorer pages (Streamlit allowed here; never in ``ppd_core``).

One concern per module; a page imports what it needs and only builds a scenario, calls ``ui``/``ppd_core``
and lays out results:

* ``controls``  – the control specs: one widget per scenario key, its range, label and group (pure data)
* ``urlstate``  – the URL state machine: validate the address bar, seed widgets, write back the canonical link
* ``widgets``   – drawing the controls (sidebar, page-only controls, warnings, share box, feasibility notes)
* ``runner``    – the server's one ``ppd_core`` WorkerPool (healing, one retry), cached runs
* ``progress``  – the one progress adapter (Streamlit implementation of ppd_core's Progress protocol)
* ``sweeps``    – the Sweep page's points, each sweep one ``ppd_core`` ``run_grid`` call
* ``cards``     – number formatting, metric definitions, headline cards and summary tables
* ``charts``    – Plotly figures of results, and a chart with its PNG download
* ``specs``     – Explore's figures as plain dict specs (no Plotly validation on the slider path), cached
* ``timeline``  – the teaching timeline (Gantt of spans, event stepping)
* ``exports``   – CSV / JSON / PNG downloads
* ``uploads``   – checks of visitors' uploads (size, name, encoding, schema) before anything reads them
* ``advisor_view``, ``paper_runs``/``paper_charts``, ``validation_runs``/``validation_view`` – the Advisor,
  Paper and Validation pages' cached runs, figures and tables

No module-level mutable state: every per-session value lives in ``st.session_state``, the worker pool in
``st.cache_resource``, cached runs in ``st.cache_data`` (Streamlit reruns scripts; module globals would be
shared by every session and survive reruns).
"""
