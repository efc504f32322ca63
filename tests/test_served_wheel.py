"""The book serves the d2lpar it ran, and a fresh venv installs it.

scripts/build_dist.py builds the wheel and sdist that scripts/build-book.sh
serves in html/dist/, checked file by file against the package the
build's kernels import. The fast tests build them into a temporary folder.
The ``notebooks`` test (``make test-notebooks``, after ``make book``)
installs the served wheel into a fresh venv with the command a
notebook's header gives, offline, and runs a served notebook there.
"""

import os
import pathlib
import re
import shutil
import subprocess
import zipfile

import build_dist
import chapter_notebook
import nbformat
import pytest
from conftest import ROOT, plain_venv, run_notebook, venv_env

HTML = ROOT / '_build' / 'html'
# A short chapter whose notebook runs in seconds in quick mode.
CHAPTER = 'split-batch'


@pytest.fixture(scope='module')
def dist(tmp_path_factory):
    out = tmp_path_factory.mktemp('dist')
    wheel, sdist = build_dist.build(out)
    return out, wheel, sdist


def test_build_serves_the_package_it_runs(dist):
    """A wheel and an sdist named with the installed version, the
    wheel holding every module of the imported d2lpar byte for byte, and
    an index page linking both."""
    import importlib.metadata

    import d2lpar

    out, wheel, sdist = dist
    version = importlib.metadata.version('d2lpar')
    assert wheel.name == f'd2lpar-{version}-py3-none-any.whl'
    assert sdist.name == f'd2lpar-{version}.tar.gz'
    package = pathlib.Path(d2lpar.__file__).parent
    modules = {
        'd2lpar/' + p.relative_to(package).as_posix()
        for p in package.rglob('*.py')
    }
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        for name in modules:
            assert z.read(name) == (package.parent / name).read_bytes()
    assert modules <= names and 'd2lpar/bench/__init__.py' in names
    links = re.findall(r'href="([^"]+)"', (out / 'index.html').read_text())
    assert links == [wheel.name, sdist.name]
    assert not (ROOT / 'build').exists()  # built in a copy


def test_a_wheel_of_other_code_is_refused(dist, tmp_path):
    """The check can fail: a package that differs from the wheel in one
    module, or has one more, is refused."""
    import d2lpar

    _, wheel, _ = dist
    package = tmp_path / 'd2lpar'
    shutil.copytree(
        pathlib.Path(d2lpar.__file__).parent,
        package,
        ignore=shutil.ignore_patterns('__pycache__'),
    )
    build_dist.check_wheel(wheel, package)  # the same code passes
    with open(package / 'splitting.py', 'a') as f:
        f.write('\n# changed\n')
    with pytest.raises(SystemExit, match='splitting.py'):
        build_dist.check_wheel(wheel, package)
    (package / 'splitting.py').unlink()
    shutil.copy(pathlib.Path(d2lpar.__file__).parent / 'splitting.py', package)
    (package / 'extra.py').write_text('')
    with pytest.raises(SystemExit, match='extra.py'):
        build_dist.check_wheel(wheel, package)


def test_config_values(tmp_path):
    """The site and repository addresses come from _config.yml, empty
    where unset (the project's own are unset)."""
    config = tmp_path / '_config.yml'
    config.write_text(
        'html:\n  baseurl: https://example.org/book\nrepository:\n  url: ""\n'
    )
    assert build_dist.config_value('html.baseurl', config) == (
        'https://example.org/book'
    )
    assert build_dist.config_value('repository.url', config) == ''
    assert build_dist.config_value('launch_buttons.x', config) == ''
    assert build_dist.config_value('html.baseurl') == ''


def served_wheel():
    """The wheel of the last `make book`, or a skip/failure saying so."""
    wheels = sorted((HTML / 'dist').glob('d2lpar-*-py3-none-any.whl'))
    if not HTML.exists():
        pytest.skip('no built book in _build/html: run make book first')
    assert len(wheels) == 1, f'{HTML / "dist"} serves {wheels}'
    return wheels[0]


def student_site_packages(tmp_path):
    """The student venv's packages (make test-notebooks installed them
    from the index), without its own d2lpar: a folder of links to
    them, which the fresh venv reads through a .pth file."""
    venv = plain_venv()
    found = list(venv.glob('lib/python3.*/site-packages'))
    assert len(found) == 1, found
    farm = tmp_path / 'deps'
    farm.mkdir()
    for entry in found[0].iterdir():
        own = re.match(r'(d2lpar\b|__editable__.*d2lpar)', entry.name)
        if not own and entry.suffix != '.pth':
            (farm / entry.name).symlink_to(entry)
    return venv, farm


@pytest.mark.notebooks
def test_served_wheel_installs_and_runs_a_notebook(tmp_path):
    """A fresh venv installs the wheel served in html/dist/ with the
    command the served notebooks' headers give (offline: --no-index,
    its dependencies seen in the student venv), imports d2lpar from
    itself, and runs the served notebook of a chapter top to bottom."""
    wheel = served_wheel()
    notebook = HTML / 'notebooks' / f'{CHAPTER}.ipynb'
    header = nbformat.read(notebook, as_version=4).cells[1].source
    command = chapter_notebook.install_commands(
        wheel.name.split('-')[1],
        os.environ.get('D2LPAR_SITE_URL', ''),
    )[0]
    assert f'`{command}`' in header
    student, deps = student_site_packages(tmp_path)
    base = subprocess.run(
        [
            str(student / 'bin' / 'python'),
            '-c',
            'import sys; print(sys._base_executable)',
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    fresh = tmp_path / 'fresh'
    subprocess.run([base, '-m', 'venv', str(fresh)], check=True)
    (site,) = fresh.glob('lib/python3.*/site-packages')
    (site / 'student-deps.pth').write_text(f'{deps}\n')
    work = tmp_path / 'work'
    work.mkdir()
    shutil.copy(wheel, work)
    shutil.copy(notebook, work)
    env = venv_env(fresh, PIP_NO_INDEX='1', PIP_CONFIG_FILE=os.devnull)
    pip = command.split()  # pip install "./d2lpar-...whl[cpu,notebook]"
    assert pip[:2] == ['pip', 'install'] and len(pip) == 3, command
    done = subprocess.run(
        [
            str(fresh / 'bin' / 'python'),
            '-m',
            'pip',
            'install',
            '--quiet',
            pip[2].strip('"'),
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    where = subprocess.run(
        [
            str(fresh / 'bin' / 'python'),
            '-c',
            'import d2lpar; print(d2lpar.__file__)',
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert where.startswith(str(site)), where
    run_notebook(fresh, work / notebook.name, env)
    ran = nbformat.read(work / notebook.name, as_version=4)
    outputs = [
        o for c in ran.cells if c.cell_type == 'code' for o in c.outputs
    ]
    assert outputs and not any(o.output_type == 'error' for o in outputs)
