"""PPD Explorer: Streamlit entry point (`streamlit run app.py`).

A router and frame only: page config, navigation over the scripts in ``pages/`` and a short sidebar note.
All simulation happens in ``ppd_core``; the ``ui`` package turns widgets into a Scenario, keeps the address bar
equal to the share link, runs the simulations (one self-healing worker pool) and turns results into charts.
"""
import streamlit as st

# Streamlit runs this entry script as "__main__". The simulation worker processes (spawned by
# ui/runner.py) import it as "__mp_main__" while they start: they must not build the app.
if __name__ == "__main__":
    # The favicon is an emoji: the browser draws it from a data: URI. A ":material/...:" icon is an SVG that the
    # frontend fetches from fonts.gstatic.com again on every rerun (one failed request per slider move offline).
    st.set_page_config(page_title="PPD Explorer", page_icon="🔀", layout="wide",
                       initial_sidebar_state="collapsed" if st.query_params.get("present") == "1" else "expanded")

    pg = st.navigation([
        st.Page("pages/explore.py", title="Explore", icon=":material/tune:", default=True),
        st.Page("pages/sweep.py", title="Sweep", icon=":material/show_chart:", url_path="sweep"),
        st.Page("pages/advise.py", title="Advisor", icon=":material/travel_explore:", url_path="advise"),
        st.Page("pages/learn.py", title="Learn", icon=":material/school:", url_path="learn"),
        st.Page("pages/paper.py", title="Paper", icon=":material/article:", url_path="paper"),
        st.Page("pages/validation.py", title="Validation", icon=":material/fact_check:", url_path="validation"),
        st.Page("pages/compare.py", title="Compare links", icon=":material/compare_arrows:", url_path="compare"),
    ])
    st.sidebar.caption(
        "**PPD Explorer** simulates multi-turn LLM serving on a few GPUs: prefill/decode disaggregation (PD), "
        "PPD (Turn 2+ served on the decode node by an append-prefill) and replicas. Every control is in the URL: "
        "share the address to share the view. Numbers come from the `ppd_core` simulator "
        "(same as `python -m ppd_core run '<url>'`).")
    pg.run()
