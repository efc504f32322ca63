"""Build the wheel and sdist of the d2lpar a book build executes.

Usage: python scripts/build_dist.py OUT_DIR
       python scripts/build_dist.py --config KEY    (print a config value)

Run with the venv that executes the book (scripts/build-book.sh does):
the wheel is built from the package that venv imports, offline (pip's
``wheel --no-deps --no-build-isolation`` and setuptools' own
``build_sdist``: no download of build tools), then checked file by file
against that package, so the served wheel is the code the pages ran.
OUT_DIR gets the two files and an ``index.html`` that links them (a
stable address for a reader, and a page ``pip --find-links`` reads).

``--config KEY`` prints a value of _config.yml (``html.baseurl``,
``repository.url``), or nothing where it is unset: the build passes them
to the pages and notebooks as D2LPAR_SITE_URL and D2LPAR_REPOSITORY_URL.
"""

import hashlib
import html
import importlib.metadata
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
# What the package is built from (the rest of the checkout is the book).
PACKAGE_FILES = ('pyproject.toml', 'README.md', 'LICENSE', 'd2lpar')


def config_value(key, path=ROOT / '_config.yml'):
    """The value of a dotted key of _config.yml, or '' where unset."""
    import yaml

    value = yaml.safe_load(path.read_text())
    for part in key.split('.'):
        value = value.get(part) if isinstance(value, dict) else None
    return '' if value is None else str(value)


def wheel_name(version):
    """The file name of d2lpar's pure-Python wheel of ``version``."""
    return f'd2lpar-{version}-py3-none-any.whl'


def sdist_name(version):
    return f'd2lpar-{version}.tar.gz'


def digest(data):
    return hashlib.sha256(data).hexdigest()


def check_wheel(wheel, package_dir):
    """Every module of ``package_dir`` is in ``wheel`` with the same
    bytes, and the wheel holds no other module: raises otherwise."""
    package_dir = pathlib.Path(package_dir)
    here = {
        'd2lpar/' + p.relative_to(package_dir).as_posix(): digest(
            p.read_bytes()
        )
        for p in package_dir.rglob('*.py')
    }
    with zipfile.ZipFile(wheel) as z:
        served = {
            n: digest(z.read(n)) for n in z.namelist() if n.endswith('.py')
        }
    if here != served:
        differ = sorted(set(here.items()) ^ set(served.items()))
        raise SystemExit(
            f'{wheel} is not the package the build runs '
            f'({package_dir}): {[n for n, _ in differ][:10]}'
        )


def index_page(files):
    """A plain page linking ``files`` (pip --find-links reads it)."""
    links = '\n'.join(
        f'<li><a href="{html.escape(f)}">{html.escape(f)}</a></li>'
        for f in files
    )
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        '<title>d2lpar downloads</title></head>\n<body>\n'
        '<h1>d2lpar, as this book ran it</h1>\n'
        f'<ul>\n{links}\n</ul>\n</body></html>\n'
    )


def build(out_dir, source=ROOT):
    """Build the wheel and sdist into ``out_dir``; return their paths."""
    import d2lpar

    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    version = importlib.metadata.version('d2lpar')
    with tempfile.TemporaryDirectory() as tmp:
        # A copy, so the checkout gets no build/ or egg-info of this run.
        src = pathlib.Path(tmp) / 'src'
        src.mkdir()
        for name in PACKAGE_FILES:
            if (source / name).is_dir():
                shutil.copytree(
                    source / name,
                    src / name,
                    ignore=shutil.ignore_patterns('__pycache__'),
                )
            elif (source / name).exists():
                shutil.copy(source / name, src / name)
        pip = [sys.executable, '-m', 'pip']
        # setuptools' and wheel's deprecation notices are not this build's
        env = dict(os.environ, PYTHONWARNINGS='ignore')
        subprocess.run(
            pip
            + [
                'wheel',
                '--quiet',
                '--no-deps',
                '--no-build-isolation',
                '--no-index',
                '-w',
                str(out),
                str(src),
            ],
            check=True,
            env=env,
        )
        subprocess.run(
            [
                sys.executable,
                '-c',
                'import sys; from setuptools import build_meta as b; '
                'print(b.build_sdist(sys.argv[1]))',
                str(out.resolve()),
            ],
            cwd=src,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    wheel, sdist = out / wheel_name(version), out / sdist_name(version)
    for path in (wheel, sdist):
        if not path.exists():
            raise SystemExit(f'{path} was not built (d2lpar {version})')
    check_wheel(wheel, os.path.dirname(d2lpar.__file__))
    (out / 'index.html').write_text(index_page([wheel.name, sdist.name]))
    return wheel, sdist


if __name__ == '__main__':
    if sys.argv[1] == '--config':
        print(config_value(sys.argv[2]))
    else:
        for path in build(sys.argv[1]):
            print(f'dist: {path} ({path.stat().st_size:,} bytes)')
