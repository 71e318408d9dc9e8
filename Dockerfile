# PPD Explorer in a container: the dashboard on port 8501 (docs/install.md).
#   docker build -t ppd-explorer .
#   docker run --rm -p 8501:8501 ppd-explorer            # then http://localhost:8501
#   docker run --rm ppd-explorer ppd run layout=2P_2pD --json
# The builder stage compiles the wheel (mypyc engine inside, setup.py); the runtime stage installs only the
# wheel, with the dashboard's packages at the versions the test suite pins (requirements.txt).

FROM python:3.11-slim AS builder
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY requirements-build.txt ./
RUN pip install --no-cache-dir --disable-pip-version-check -r requirements-build.txt
COPY . .
# the build requirements are installed above at the same pins as [build-system]: no second download
RUN python -m build --wheel --no-isolation --outdir /dist .

FROM python:3.11-slim
# Debian's Chromium: kaleido drives it for the dashboard's PNG export (no browser download at run time)
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium \
 && rm -rf /var/lib/apt/lists/*
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin ppd
COPY --from=builder /dist/ /tmp/dist/
COPY requirements.txt /tmp/dist/
RUN pip install --no-cache-dir --disable-pip-version-check -c /tmp/dist/requirements.txt \
      "$(ls /tmp/dist/ppd_explorer-*.whl)[app]" \
 && rm -rf /tmp/dist
USER ppd
WORKDIR /home/ppd
# PPD_PUBLIC_URL (optional): the address share links start with, e.g. https://ppd.example.org/ behind a proxy
ENV PYTHONUNBUFFERED=1 \
    BROWSER_PATH=/usr/bin/chromium
EXPOSE 8501
# (no --start-interval: Docker engines before 25 refuse it)
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; r = urllib.request.urlopen('http://localhost:8501/_stcore/health', timeout=4); sys.exit(0 if r.read().strip() == b'ok' else 1)"]
CMD ["ppd", "app", "--address", "0.0.0.0"]
