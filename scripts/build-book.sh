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
rm -rf _build/extra && mkdir -p _build/extra
# Where the site and the repository live (the pages and the notebooks'
# headers give install commands with them): _config.yml's html.baseurl
# and repository.url, unless D2LPAR_SITE_URL / D2LPAR_REPOSITORY_URL are
# set (even empty). The chapters' kernels inherit them.
config() { "$venv/bin/python" scripts/build_dist.py --config "$1"; }
export D2LPAR_SITE_URL=${D2LPAR_SITE_URL-$(config html.baseurl)}
export D2LPAR_REPOSITORY_URL=${D2LPAR_REPOSITORY_URL-$(config repository.url)}
# The wheel and sdist of the d2lpar the chapters execute, checked file by
# file against it, served in html/dist/ (the install page links them).
"$venv/bin/python" scripts/build_dist.py _build/extra/dist
# student notebooks only (make test-slow runs the teacher's)
scripts/make-homework.sh "$venv"
start=$(date +%s)
# MXNet compiles a Python wrapper for each of its operators every time a
# process imports it; the chapters' kernels and the jobs they launch
# share the compiled code through this folder instead (item 8 of
# d2lpar/_runtime.py), emptied here so each build starts afresh.
export D2LPAR_MXNET_CODE_CACHE=$PWD/_build/mxnet-code-cache
rm -rf "$D2LPAR_MXNET_CODE_CACHE"
# Likewise Fashion-MNIST's files, decompressed once per build instead of
# in every training run and worker (D2LPAR_IDX_CACHE, d2lpar/idx.py).
export D2LPAR_IDX_CACHE=$PWD/_build/idx-cache
rm -rf "$D2LPAR_IDX_CACHE"
# The log is kept: it says how long each chapter took to execute.
# `time` adds the CPU seconds of every process the build waited for
# (kernels, the jobs they launch): divided by the cores, the least wall
# time any schedule of the same work could take on this machine.
TIMEFORMAT="book: the build used %0U s user + %0S s system CPU in %0R s on $(nproc) cores"
time "$venv/bin/jupyter-book" build . --all -W --keep-going 2>&1 \
    | tee _build/book-build.log
# A notebook per chapter for plain Jupyter (html/notebooks/): the library
# source the page includes becomes a code cell, glue roles the values
# this build glued, admonitions readable text, the build's plumbing goes
# and the solutions fold after the exercises (scripts/chapter_notebook.py).
# `make test-notebooks` executes the same notebooks with only
# d2lpar[cpu,notebook] installed.
scripts/chapter-notebooks.sh "$venv" _build/html/notebooks \
    _build/jupyter_execute/book
echo "book: seconds per chapter (from _build/book-build.log):"
grep "Executed notebook in" _build/book-build.log || true
echo "book: built _build/html in $(( $(date +%s) - start )) s${D2LPAR_QUICK:+ (quick mode)}"
