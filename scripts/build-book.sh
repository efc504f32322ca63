#!/usr/bin/env bash
# Build the executed book into _build/html from scratch.
# Usage: scripts/build-book.sh [VENV_DIR]      (called by `make book`)
# Fails (non-zero) on any cell error or Sphinx warning. Every chapter is
# re-executed (execute_notebooks: force), so a change in d2lpar alone is
# always reflected. D2LPAR_QUICK=1 trains briefly, and the pages say so.
set -euo pipefail
venv=${1:-.venv}
scripts/get-mathjax.sh
"$venv/bin/jupyter-book" clean .
rm -rf _build/extra && mkdir -p _build/extra/notebooks
# A notebook per chapter for plain Jupyter (served with the HTML, in
# html/notebooks/): the library source the page includes becomes a code
# cell, glue roles and admonitions readable text (scripts/chapter_notebook.py).
# `make test-notebooks` executes the same notebooks with only
# d2lpar[cpu,notebook] installed.
scripts/chapter-notebooks.sh "$venv" _build/extra/notebooks
# student notebooks only (make test-slow runs the teacher's)
scripts/make-homework.sh "$venv"
start=$(date +%s)
# The log is kept: it says how long each chapter took to execute.
# `time` adds the CPU seconds of every process the build waited for
# (kernels, the jobs they launch): divided by the cores, the least wall
# time any schedule of the same work could take on this machine.
TIMEFORMAT="book: the build used %0U s user + %0S s system CPU in %0R s on $(nproc) cores"
time "$venv/bin/jupyter-book" build . --all -W --keep-going 2>&1 \
    | tee _build/book-build.log
echo "book: seconds per chapter (from _build/book-build.log):"
grep "Executed notebook in" _build/book-build.log || true
echo "book: built _build/html in $(( $(date +%s) - start )) s${D2LPAR_QUICK:+ (quick mode)}"
