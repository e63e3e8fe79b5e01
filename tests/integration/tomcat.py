# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Private Apache Tomcat instances for the integration tests: Debian's
tomcat10 (CATALINA_HOME /usr/share/tomcat10, from tomcat10-common and
libtomcat10-java), each run from a CATALINA_BASE of its own under the
test's workdir, on 127.0.0.1 and a free port, with no shutdown port, no
AJP connector and no system service.

Each instance serves one test application as context /app:
/app/session.jsp creates (or resumes) a session and answers, in plain text,

    route=<the Engine's jvmRoute, read from Tomcat's own MBean>
    session=<the session id, which Tomcat suffixes with .<jvmRoute>>
    new=<true for a session created by this request>

The JVM is our own child (java runs Bootstrap directly, no catalina.sh),
started and stopped by its pid: SIGTERM runs Tomcat's shutdown hook.

An instance may also run the project's Tomcat Listener (issue 35,
contrib/tomcat, built into build/beacon-tomcat.jar): Tomcat(...,
listener={attribute: value}) symlinks the jar into its CATALINA_BASE/lib
(Tomcat's common loader) and puts a Server-level <Listener> line with
those attributes in server.xml; auto_deploy=True makes its Host scan
webapps/ every second (autoDeploy, backgroundProcessorDelay="1"), and
deploy() and undeploy() add and remove an application directory there
while it runs. Without them, server.xml is what it always was.
"""

import http.client
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from xml.sax.saxutils import quoteattr

from httpd import REPO, ChildProcess, free_port, wait_for

CATALINA_HOME = Path(os.environ.get("CATALINA_HOME", "/usr/share/tomcat10"))
# What a fast start costs nothing for: a small heap, client compiler only,
# the JDK's class-data sharing archive, no perf-data file in /tmp.
JVM_OPTIONS = ["-Xmx64m", "-Xss512k", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
               "-Xshare:auto", "-XX:-UsePerfData", "-Djava.awt.headless=true",
               # as catalina.sh opens them: Tomcat's leak checks at stop
               # warn without
               "--add-opens=java.base/java.lang=ALL-UNNAMED",
               "--add-opens=java.base/java.io=ALL-UNNAMED",
               "--add-opens=java.base/java.util=ALL-UNNAMED",
               "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
               "--add-opens=java.rmi/sun.rmi.transport=ALL-UNNAMED"]
APP_PATH = "/app/session.jsp"
# The Listener's jar as `make all` builds it ($BEACON_TOMCAT_JAR wins)
LISTENER_JAR = Path(os.environ.get("BEACON_TOMCAT_JAR", REPO / "build" / "beacon-tomcat.jar"))
LISTENER_CLASS = "modproxybeacon.tomcat.BeaconListener"

SERVER_XML = """\
<?xml version="1.0" encoding="UTF-8"?>
<!-- port="-1": no shutdown port; the test stops the JVM by its pid -->
<Server port="-1" shutdown="SHUTDOWN">
{listener}  <Service name="Catalina">
    <Connector address="127.0.0.1" port="{port}" protocol="HTTP/1.1"
               connectionTimeout="10000" maxThreads="8"/>
    <Engine name="Catalina" defaultHost="localhost" jvmRoute="{route}">
      <Host name="localhost" appBase="webapps" unpackWARs="false"
            autoDeploy="{auto_deploy}" deployOnStartup="true"{host_extra}/>
    </Engine>
  </Service>
</Server>
"""

# Console only: the JVM's stdout and stderr go to logs/catalina.out.
LOGGING_PROPERTIES = """\
handlers = java.util.logging.ConsoleHandler
.handlers = java.util.logging.ConsoleHandler
java.util.logging.ConsoleHandler.level = FINE
java.util.logging.ConsoleHandler.formatter = org.apache.juli.OneLineFormatter
"""

# No global conf/web.xml: the application maps its JSP servlet itself, and
# metadata-complete spares the annotation scan.
WEB_XML = """\
<?xml version="1.0" encoding="UTF-8"?>
<web-app xmlns="https://jakarta.ee/xml/ns/jakartaee" version="6.0"
         metadata-complete="true">
  <servlet>
    <servlet-name>jsp</servlet-name>
    <servlet-class>org.apache.jasper.servlet.JspServlet</servlet-class>
    <init-param><param-name>development</param-name><param-value>false</param-value>
    </init-param>
  </servlet>
  <servlet-mapping>
    <servlet-name>jsp</servlet-name>
    <url-pattern>*.jsp</url-pattern>
  </servlet-mapping>
</web-app>
"""

# No jar scan for TLDs or fragments: the application has none.
CONTEXT_XML = """\
<?xml version="1.0" encoding="UTF-8"?>
<Context>
  <JarScanner scanClassPath="false" scanManifest="false"/>
</Context>
"""

SESSION_JSP = """\
<%@ page contentType="text/plain" session="true" trimDirectiveWhitespaces="true"
         import="java.lang.management.ManagementFactory,javax.management.ObjectName" %>
route=<%= ManagementFactory.getPlatformMBeanServer().getAttribute(
              new ObjectName("Catalina:type=Engine"), "jvmRoute") %>
session=<%= session.getId() %>
new=<%= session.isNew() %>
"""

# An application deploy() adds at runtime: Tomcat's DefaultServlet serves
# its static files (no JSP to compile on the first request), and its JSPs
# are compiled as /app's are. Once compiled (development=false), a JSP
# answers from work/ until its context stops, even with its directory
# gone from webapps/.
DEPLOYED_WEB_XML = WEB_XML.replace("</web-app>", """\
  <servlet>
    <servlet-name>default</servlet-name>
    <servlet-class>org.apache.catalina.servlets.DefaultServlet</servlet-class>
  </servlet>
  <servlet-mapping>
    <servlet-name>default</servlet-name>
    <url-pattern>/</url-pattern>
  </servlet-mapping>
</web-app>""")


def java():
    """The java to run, or None: $JAVA, else the one on PATH."""
    return os.environ.get("JAVA") or shutil.which("java")


def missing():
    """Why no Tomcat can run here (a sentence), or None when one can."""
    if not (CATALINA_HOME / "bin" / "bootstrap.jar").is_file():
        return f"no Tomcat at {CATALINA_HOME} (Debian: tomcat10-common)"
    if java() is None:
        return "no java (Debian: default-jre-headless)"
    return None


def parse_page(body):
    """session.jsp's answer as a dict: route, session, new."""
    return dict(line.split("=", 1) for line in body.splitlines() if "=" in line)


class Tomcat(ChildProcess):
    """One Tomcat with jvmRoute `route`, in workdir/tomcat-<route>."""

    def __init__(self, route, workdir, port=None, listener=None, auto_deploy=False):
        """listener: the Listener's attributes ({name: value}, className
        added), or None for no Listener; auto_deploy: the Host deploys
        and undeploys what appears in and leaves webapps/ within a second."""
        self.route = route
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.base = Path(workdir) / f"tomcat-{route}"
        self.log_path = self.base / "logs" / "catalina.out"
        self.startup_seconds = None
        self.listener = listener
        self.auto_deploy = auto_deploy

    def server_xml(self):
        listener = ""
        if self.listener is not None:
            attrs = {"className": LISTENER_CLASS, **self.listener}
            listener = ("  <Listener " + "\n            ".join(
                f"{k}={quoteattr(str(v))}" for k, v in attrs.items()) + "/>\n")
        return SERVER_XML.format(
            port=self.port, route=self.route, listener=listener,
            auto_deploy=str(self.auto_deploy).lower(),
            host_extra=' backgroundProcessorDelay="1"' if self.auto_deploy else "")

    def _write_base(self):
        conf, app = self.base / "conf", self.base / "webapps" / "app"
        for d in (conf, self.base / "logs", self.base / "temp", self.base / "work",
                  app / "WEB-INF", app / "META-INF"):
            d.mkdir(parents=True, exist_ok=True)
        (conf / "server.xml").write_text(self.server_xml())
        (conf / "logging.properties").write_text(LOGGING_PROPERTIES)
        if self.listener is not None:
            lib = self.base / "lib"
            lib.mkdir(exist_ok=True)
            if not (lib / LISTENER_JAR.name).is_symlink():
                (lib / LISTENER_JAR.name).symlink_to(LISTENER_JAR)
        (app / "WEB-INF" / "web.xml").write_text(WEB_XML)
        (app / "META-INF" / "context.xml").write_text(CONTEXT_XML)
        (app / "session.jsp").write_text(SESSION_JSP)

    def command(self):
        home, base = CATALINA_HOME, self.base
        classpath = f"{home}/bin/bootstrap.jar:{home}/bin/tomcat-juli.jar"
        return [java(), *JVM_OPTIONS,
                f"-Djava.util.logging.config.file={base}/conf/logging.properties",
                "-Djava.util.logging.manager=org.apache.juli.ClassLoaderLogManager",
                f"-Dcatalina.home={home}", f"-Dcatalina.base={base}",
                f"-Djava.io.tmpdir={base}/temp",
                "-cp", classpath, "org.apache.catalina.startup.Bootstrap", "start"]

    def start(self, timeout=60):
        """Starts the JVM and returns once /app/session.jsp answers (the JSP
        compiled, the session manager up); startup_seconds says how long.
        Measured here: 1.0 to 2.0 s each (2.5 to 3.3 s without
        JVM_OPTIONS); two started side by side on 2 cores took no less in
        all than one after the other."""
        began = self.launch()
        try:
            wait_for(self._answers, timeout, f"tomcat {self.route} on port {self.port}",
                     interval=0.1)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.log_tail()}") from None
        self.startup_seconds = time.monotonic() - began
        return self

    def launch(self):
        """Writes the CATALINA_BASE and starts the JVM, without waiting for
        anything (start() waits; a test of a start that must fail does
        not): returns time.monotonic() when it started."""
        self._write_base()
        began = time.monotonic()
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(self.command(), cwd=self.base, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT)
        return began

    def deploy(self, name, files):
        """Adds the application directory webapps/<name> (context /<name>)
        with files {relative path: text} and DEPLOYED_WEB_XML: written
        beside webapps/ first, then renamed in, so that the Host's scan
        never sees it half copied. Returns time.monotonic() right after
        the rename."""
        staged = self.base / "staging" / name
        for rel, text in {"WEB-INF/web.xml": DEPLOYED_WEB_XML,
                          "META-INF/context.xml": CONTEXT_XML, **files}.items():
            (staged / rel).parent.mkdir(parents=True, exist_ok=True)
            (staged / rel).write_text(text)
        staged.rename(self.base / "webapps" / name)
        return time.monotonic()

    def undeploy(self, name):
        """Removes webapps/<name>: renamed out of webapps/ at once (a
        directory deleted file by file could make the Host reload it
        first), then deleted. Returns time.monotonic() right after the
        rename."""
        gone = self.base / "staging" / f"{name}.removed"
        (self.base / "webapps" / name).rename(gone)
        moved = time.monotonic()
        shutil.rmtree(gone)
        return moved

    def log_text(self):
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def _answers(self):
        """True once the page names this instance's route; raises at once
        if the JVM died (start() adds its log)."""
        if self.proc.poll() is not None:
            raise AssertionError(f"tomcat {self.route} exited {self.proc.returncode}")
        try:
            status, _, body = self.get(APP_PATH)
        except OSError:
            return False
        return status == 200 and parse_page(body).get("route") == self.route

    def get(self, path, headers=None):
        """GET path from this instance itself: (status, headers, body)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", path, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, resp.getheaders(), resp.read().decode("latin-1")
        finally:
            conn.close()

    def log_tail(self, n=40):
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except FileNotFoundError:
            return "(no log)"

    def problems(self):
        """The SEVERE and WARNING lines of its log: a test passes only if
        Tomcat stayed quiet too, as httpd must."""
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return []
        return [l for l in text.splitlines() if re.search(r"^\S+ \S+ (SEVERE|WARNING) ", l)]

    def stop(self, timeout=20):
        """SIGTERM (Tomcat's shutdown hook), SIGKILL after timeout."""
        super().stop(timeout)
