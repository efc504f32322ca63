"""PyTorch's loader fetches Fashion-MNIST when no folder has it
(d2lpar.fashion.download: standard library only, SHA-1 checked, written
atomically into MXNet's cache).

No test touches the internet: the files are served by a local
http.server in a thread, and $MXNET_GLUON_REPO (or ``url=``) points the
download at it.
"""

import hashlib
import http.server
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from conftest import NAMES, REAL_DIR, needs_real_data, write_fashion_dir
from numpy.testing import assert_array_equal

torch = pytest.importorskip('torch')

from d2lpar import fashion  # noqa: E402
from d2lpar import torch as tdp  # noqa: E402
from d2lpar.idx import read_split  # noqa: E402

ALL = NAMES['train'] + NAMES['test']
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Mirror:
    """A local HTTP server answering ``GET .../NAME`` with ``files[NAME]``
    (404 otherwise); ``requests`` lists every path asked for."""

    def __init__(self, files):
        self.files, self.requests = dict(files), []
        mirror = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                mirror.requests.append(self.path)
                body = mirror.files.get(self.path.rsplit('/', 1)[-1])
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(
            ('127.0.0.1', 0), Handler
        )
        self.repo = f'http://127.0.0.1:{self.server.server_port}/'
        self.thread = threading.Thread(
            target=self.server.serve_forever, daemon=True
        )
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def sums(files):
    return {
        name: hashlib.sha1(body).hexdigest() for name, body in files.items()
    }


def read_all(directory):
    return {
        name: open(os.path.join(directory, name), 'rb').read() for name in ALL
    }


@pytest.fixture
def places(tmp_path, monkeypatch):
    """Every folder the loader searches is empty; returns MXNet's cache,
    where a download lands."""
    import d2lpar.torch.data as tdata

    monkeypatch.delenv('D2LPAR_DATA', raising=False)
    monkeypatch.setenv('MXNET_HOME', str(tmp_path / 'mxnet-home'))
    monkeypatch.setattr(tdata, 'DEBIAN_DIR', str(tmp_path / 'debian'))
    return str(tmp_path / 'mxnet-home' / 'datasets' / 'fashion-mnist')


@pytest.fixture
def small(tmp_path):
    """The bytes of four small valid files, and the arrays in them."""
    written = write_fashion_dir(tmp_path / 'source', n_train=20, n_test=8)
    return read_all(tmp_path / 'source'), written


@pytest.fixture
def serve(monkeypatch):
    """Start a Mirror of ``files`` and point $MXNET_GLUON_REPO at it."""
    mirrors = []

    def start(files):
        mirror = Mirror(files)
        mirrors.append(mirror)
        monkeypatch.setenv('MXNET_GLUON_REPO', mirror.repo)
        return mirror

    yield start
    for mirror in mirrors:
        mirror.close()


@needs_real_data
def test_download_then_load_gives_debians_arrays(
    places, serve, monkeypatch, capsys
):
    """With no copy anywhere, the loader fetches the four files Gluon's
    way (``$MXNET_GLUON_REPO/gluon/dataset/fashion-mnist/NAME``) into
    MXNet's cache, says so one line a file with its size, and loads
    exactly the arrays of Debian's copy; a second load asks nothing."""
    files = read_all(REAL_DIR)
    mirror = serve(files)
    # Debian's .gz files are compressed otherwise than Gluon's mirror's
    # (other SHA-1 sums, the same arrays): the mirror here serves them
    monkeypatch.setattr(fashion, 'SHA1', sums(files))
    train_iter, test_iter = tdp.load_fashion_mnist(2500)
    assert sorted(mirror.requests) == sorted(
        f'/{fashion.NAMESPACE}{name}' for name in ALL
    )
    assert read_all(places) == files
    assert not [f for f in os.listdir(places) if f not in ALL]
    out = capsys.readouterr().out
    for name in ALL:
        size = f'{len(files[name]) / 1e6:.1f} MB'
        assert [
            line for line in out.splitlines() if name in line and size in line
        ]
    for split, loader in (('train', train_iter), ('test', test_iter)):
        X, y = read_split(REAL_DIR, split)
        got = list(loader)
        assert sum(len(b) for _, b in got) == len(y)
        if split == 'test':  # not shuffled: the same order
            assert_array_equal(torch.cat([a for a, _ in got]).numpy(), X)
            assert_array_equal(torch.cat([b for _, b in got]).numpy(), y)
        else:
            labels = torch.cat([b for _, b in got]).numpy()
            assert_array_equal(sorted(labels), sorted(y))
    tdp.load_fashion_mnist(2500, num_train=10)
    assert len(mirror.requests) == 4


def test_a_corrupt_file_is_refused_and_not_kept(
    places, small, serve, monkeypatch
):
    """A file whose SHA-1 differs is refused, named, and never lands in
    the cache (nor any temporary file); the files checked before it
    stay, and the next try fetches only what is missing."""
    files, _ = small
    monkeypatch.setattr(fashion, 'SHA1', sums(files))
    bad = NAMES['test'][0]
    served = dict(files)
    served[bad] = files[bad][:-1] + bytes([files[bad][-1] ^ 1])
    mirror = serve(served)
    with pytest.raises(FileNotFoundError) as e:
        tdp.load_fashion_mnist(4)
    message = str(e.value)
    assert bad in message and 'SHA-1' in message
    assert f'{mirror.repo}{fashion.NAMESPACE}{bad}' in message
    assert f'into {places}' in message  # where to put the files by hand
    left = sorted(os.listdir(places))
    assert bad not in left and not [f for f in left if f.endswith('.part')]
    assert left and set(left) < set(ALL)
    asked = len(mirror.requests)
    mirror.files[bad] = files[bad]  # the mirror is repaired
    train_iter, _ = tdp.load_fashion_mnist(4)
    assert sum(len(y) for _, y in train_iter) == 20
    assert len(mirror.requests) - asked == 4 - len(left)
    assert read_all(places) == files


def test_a_silent_server_hits_the_timeout(tmp_path):
    """A server that accepts the connection and never answers fails the
    download after the timeout, with the URL and the reason."""
    with socket.socket() as silent:
        silent.bind(('127.0.0.1', 0))
        silent.listen(8)  # the kernel accepts; nobody ever answers
        url = f'http://127.0.0.1:{silent.getsockname()[1]}/fm/'
        start = time.perf_counter()
        with pytest.raises(fashion.DownloadError) as e:
            fashion.download(str(tmp_path / 'cache'), url=url, timeout=0.5)
        took = time.perf_counter() - start
    assert 0.4 < took < 3  # the 0.5 s given, not a default
    message = str(e.value)
    assert f'{url}{ALL[0]}' in message
    assert 'timeout of 0.5 s' in message
    assert os.listdir(tmp_path / 'cache') == []


def test_an_http_error_names_the_url(tmp_path, small, serve):
    """A mirror without the file: the error names the URL and the HTTP
    status, and says where to place the files by hand."""
    files, _ = small
    mirror = serve({})
    cache = str(tmp_path / 'cache')
    with pytest.raises(fashion.DownloadError) as e:
        fashion.download(cache, sha1=sums(files))
    message = str(e.value)
    assert f'{mirror.repo}{fashion.NAMESPACE}{ALL[0]}' in message
    assert 'HTTP 404' in message and f'into {cache}' in message


def test_present_files_cause_no_request(places, small, serve, tmp_path):
    """Files found in a searched folder, or already in the cache, are
    read without a single request."""
    files, written = small
    mirror = serve(files)
    root = str(tmp_path / 'source')
    _, test_iter = tdp.load_fashion_mnist(4, root)
    assert_array_equal(
        torch.cat([y for _, y in test_iter]).numpy(), written['test'][1]
    )
    assert fashion.download(root) == []
    write_fashion_dir(places, n_train=20, n_test=8)
    tdp.load_fashion_mnist(4)
    assert mirror.requests == []


def test_download_false_asks_nothing(places, small, serve):
    """download=False: no request, and the error says it was not tried."""
    files, _ = small
    mirror = serve(files)
    with pytest.raises(FileNotFoundError, match='not attempted'):
        tdp.load_fashion_mnist(4, download=False)
    assert mirror.requests == [] and not os.path.exists(places)


def test_the_download_needs_no_mxnet(tmp_path, small, serve):
    """With MXNet blocked, the PyTorch loader still downloads (from the
    local mirror) and loads, and MXNet is never imported."""
    files, written = small
    mirror = serve(files)
    code = f"""
        import sys
        sys.modules['mxnet'] = None
        from d2lpar import fashion
        from d2lpar import torch as dp
        import d2lpar.torch.data as tdata
        fashion.SHA1 = {sums(files)!r}
        tdata.DEBIAN_DIR = {str(tmp_path / 'debian')!r}
        _, test_iter = dp.load_fashion_mnist(4)
        print([int(y) for _, ys in test_iter for y in ys])
        print(sys.modules.get('mxnet'))
    """
    env = dict(os.environ, MXNET_HOME=str(tmp_path / 'home'))
    env.pop('D2LPAR_DATA', None)
    out = subprocess.run(
        [sys.executable, '-c', textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[-2] == str([int(y) for y in written['test'][1]])
    assert lines[-1] == 'None'
    assert len(mirror.requests) == 4
