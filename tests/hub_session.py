"""A real JupyterHub on loopback, for tests/test_hub.py and tests/benchmarks/bench_hub.py.

The hub runs the configuration ``course hub-config`` writes (plain flavour: every server started by
the course's launcher, in the course's environment), with only what a test machine needs loaded on
top: loopback ports, configurable-http-proxy from ``build/node/`` (the test command installs it
with npm), the DummyAuthenticator (any name logs in), SimpleLocalProcessSpawner (learners need not
be Unix users; homes under the test's folder) and an admin service token for the REST API.

Everything waits on state (the API answering, a server ``ready``, a kernel's reply) with generous
deadlines that only end a stuck wait. Every process of the session (hub, proxy, single-user
servers, kernels) carries a marker in its environment; ``stop`` asks the hub to shut down, then
ends whatever still carries the marker, by pid, also after a failure.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROXY = ROOT / "build" / "node" / "node_modules" / ".bin" / "configurable-http-proxy"
MARKER = "MPS_DETECTIVE_HUB_SESSION"
SERVER_DEADLINE_S = 240.0  # a server's start on a loaded 2-core machine (measured: ~10 s idle)


def find_proxy() -> Path | None:
    """configurable-http-proxy: the project's own (build/node/), else one on PATH."""
    if PROXY.exists():
        return PROXY
    found = shutil.which("configurable-http-proxy")
    return Path(found) if found else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what: str, probe, deadline_s: float, every_s: float = 0.2):
    """Call ``probe`` until it returns something truthy (returned); fail after ``deadline_s``."""
    end = time.monotonic() + deadline_s
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > end:
            raise TimeoutError(f"gave up waiting for {what} after {deadline_s:.0f} s")
        time.sleep(every_s)


TEST_CONFIG = """\
c = get_config()  # noqa: F821
load_subconfig({course_config!r})  # noqa: F821 - `course hub-config`'s file, as an instructor has it
c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.ConfigurableHTTPProxy.pid_file = {pid_file!r}
c.JupyterHub.db_url = "sqlite:///{folder}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = {cookie!r}
c.JupyterHub.authenticator_class = "jupyterhub.auth.DummyAuthenticator"
c.JupyterHub.spawner_class = "jupyterhub.spawner.SimpleLocalProcessSpawner"
c.SimpleLocalProcessSpawner.home_dir_template = {homes!r} + "/{{username}}"
c.Spawner.environment = {{{marker!r}: {session!r}}}
c.Spawner.args = {args!r}
c.JupyterHub.services = [{{"name": "course-test", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{"name": "course-test", "services": ["course-test"], "scopes": [
    "admin:users", "admin:servers", "admin:server_state", "access:servers", "tokens"]}}]
"""


class Hub:
    """One JupyterHub (and its proxy) in ``folder``; learners' homes in ``folder/homes``."""

    def __init__(self, folder: Path, proxy: Path):
        import requests

        self.folder, self.proxy = Path(folder), proxy
        self.homes = self.folder / "homes"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token, self.session = secrets.token_hex(16), uuid.uuid4().hex
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"token {self.token}"
        self.process: subprocess.Popen | None = None
        self.log = self.folder / "hub.log"

    def write_config(self) -> Path:
        from course_utils.jupyter.hub import hub_config

        self.folder.mkdir(parents=True, exist_ok=True)
        self.homes.mkdir(exist_ok=True)
        hub_config("plain", self.folder / "course")  # exactly what an instructor gets
        config = self.folder / "test_config.py"
        config.write_text(TEST_CONFIG.format(
            course_config=str(self.folder / "course" / "jupyterhub_config.py"), port=self.port,
            hub_port=free_port(), api_port=free_port(), proxy=str(self.proxy), folder=self.folder,
            pid_file=str(self.folder / "proxy.pid"), cookie=str(self.folder / "cookie_secret"),
            homes=str(self.homes), marker=MARKER, session=self.session, token=self.token,
            args=["--allow-root"] if os.geteuid() == 0 else []))
        return config

    def start(self, deadline_s: float = 120.0) -> None:
        config = self.write_config()
        env = {**os.environ, MARKER: self.session}
        env.pop("MPS_DETECTIVE_HOME", None)
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "jupyterhub", "-f", str(config)], cwd=self.folder, env=env,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_for("the hub's API", lambda: self._alive() and self._answers("/hub/api/"), deadline_s)

    def _alive(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError(f"the hub exited ({self.process.returncode}):\n{self.log_tail()}")
        return True

    def _answers(self, path: str) -> bool:
        import requests

        try:
            return self.http.get(self.url + path, timeout=10).status_code == 200
        except requests.RequestException:
            return False

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no hub log)"

    def api(self, method: str, path: str, **kwargs):
        response = self.http.request(method, f"{self.url}/hub/api{path}", timeout=30, **kwargs)
        if response.status_code >= 400:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text[:500]}")
        return response.json() if response.content else None

    def login(self, name: str):
        """Log ``name`` in through the hub's login form, as a browser does; returns the session."""
        import requests

        browser = requests.Session()
        page = browser.get(f"{self.url}/hub/login", timeout=30)
        xsrf = re.search(r'name="_xsrf"\s+value="([^"]+)"', page.text)
        form = {"username": name, "password": "any", **({"_xsrf": xsrf.group(1)} if xsrf else {})}
        done = browser.post(f"{self.url}/hub/login", data=form, allow_redirects=False, timeout=30)
        if done.status_code != 302 or "jupyterhub-hub-login" not in browser.cookies:
            raise RuntimeError(f"login of {name} failed: {done.status_code} {done.text[:300]}")
        return browser

    def add_users(self, names: list[str]) -> None:
        """Create learners without a login (the admin API)."""
        self.api("POST", "/users", json={"usernames": names})

    def start_server(self, name: str) -> None:
        self.api("POST", f"/users/{name}/server")

    def server(self, name: str) -> dict | None:
        return self.api("GET", f"/users/{name}").get("servers", {}).get("")

    def wait_ready(self, name: str, deadline_s: float = SERVER_DEADLINE_S) -> dict:
        def ready():
            self._alive()
            server = self.server(name)
            if server is None or (not server.get("ready") and not server.get("pending")):
                raise RuntimeError(f"{name}'s server failed to start:\n{self.log_tail()}")
            return server if server.get("ready") else None
        return wait_for(f"{name}'s server", ready, deadline_s)

    def user_token(self, name: str) -> str:
        return self.api("POST", f"/users/{name}/tokens", json={"note": "test", "expires_in": 3600})["token"]

    def stop(self) -> list[int]:
        """Stop the hub (it stops the servers and the proxy), then end every process of this
        session still running; returns the pids that had to be ended that way."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return end_session(self.session)


def session_pids(session: str) -> list[int]:
    """Processes whose environment carries this hub run's marker (Linux: /proc)."""
    needle = f"{MARKER}={session}".encode()
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if int(entry.name) != os.getpid() and needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except (OSError, ValueError):
            continue
    return found


def end_session(session: str, grace_s: float = 10.0) -> list[int]:
    """SIGTERM, then SIGKILL, every process of the session; returns the pids found."""
    pids = session_pids(session)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        end = time.monotonic() + grace_s
        while time.monotonic() < end and session_pids(session):
            time.sleep(0.1)
        if not session_pids(session):
            break
    return pids


class Kernel:
    """A kernel in a learner's server, driven through the server's REST API and websocket."""

    def __init__(self, hub: Hub, name: str, token: str):
        import requests
        import websocket

        self.base = f"{hub.url}/user/{name}/api"
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"token {token}"
        response = self.http.post(f"{self.base}/kernels", json={"name": "python3"}, timeout=60)
        response.raise_for_status()
        self.id, self.session = response.json()["id"], uuid.uuid4().hex
        url = f"ws://127.0.0.1:{hub.port}/user/{name}/api/kernels/{self.id}/channels"
        self.connect = lambda: websocket.create_connection(  # noqa: E731
            f"{url}?session_id={self.session}", timeout=60, header=[f"Authorization: token {token}"])
        self.ws = self.connect()
        self.reconnects = 0

    def receive(self, timeout: float) -> dict:
        """The next message. A websocket the server dropped (a ping left unanswered on a starved
        machine) is opened again with the same session: the server keeps the session's messages
        while it is away and replays them."""
        import websocket

        while True:
            try:
                self.ws.settimeout(timeout)
                return json.loads(self.ws.recv())  # a timeout here raises: the kernel is stuck
            except websocket.WebSocketConnectionClosedException:
                if self.reconnects >= 5:
                    raise
                self.reconnects += 1
                self.ws = self.connect()

    def execute(self, code: str, deadline_s: float = 180.0) -> dict:
        """Run ``code``; returns {"status", "stdout", "stderr", "error"} once the kernel is idle."""
        import websocket

        msg_id = uuid.uuid4().hex
        request = json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "session": self.session,
                       "username": "test", "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": False,
                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}})
        try:
            self.ws.send(request)
        except websocket.WebSocketConnectionClosedException:
            self.ws = self.connect()
            self.reconnects += 1
            self.ws.send(request)
        result = {"status": None, "stdout": "", "stderr": "", "error": None}
        idle, end = False, time.monotonic() + deadline_s
        while result["status"] is None or not idle:
            msg = self.receive(max(0.1, end - time.monotonic()))
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                result[content["name"]] += content["text"]
            elif kind == "error":
                result["error"] = f"{content['ename']}: {content['evalue']}"
            elif kind == "execute_reply":
                result["status"] = content["status"]
            elif kind == "status" and content["execution_state"] == "idle":
                idle = True
        return result

    def close(self) -> None:
        try:
            self.ws.close()
            self.http.delete(f"{self.base}/kernels/{self.id}", timeout=30)
        except Exception:  # noqa: BLE001, S110 - the hub's shutdown ends it anyway
            pass


def run_in_terminal(hub: Hub, name: str, token: str, command: str, deadline_s: float = 180.0) -> str:
    """Type ``command`` into a new JupyterLab terminal of a learner's server (the terminals REST
    API and its websocket, as JupyterLab does) and return what the terminal showed until it ended."""
    import requests
    import websocket

    auth = {"Authorization": f"token {token}"}
    api = f"{hub.url}/user/{name}/api/terminals"
    term = requests.post(api, headers=auth, timeout=60).json()["name"]
    ws = websocket.create_connection(f"ws://127.0.0.1:{hub.port}/user/{name}/terminals/websocket/{term}",
                                     timeout=60, header=[f"Authorization: token {token}"])
    shown, end = "", time.monotonic() + deadline_s
    try:
        ws.send(json.dumps(["stdin", f"{command}; echo ended-$((6 * 7))\r"]))  # typed: not the marker
        while "ended-42" not in shown:
            ws.settimeout(max(0.1, end - time.monotonic()))
            message = json.loads(ws.recv())  # a timeout here raises: the terminal is stuck
            if message[0] == "stdout":
                shown += message[1]
    finally:
        ws.close()
        requests.delete(f"{api}/{term}", headers=auth, timeout=30)
    return shown
