# One image for every holistic process; docker-compose.yml picks the command.
#   BASE   the Python 3.11 image to build on (default: the public python:3.11-slim; the container test
#          uses a Debian rootfs with python3 and python3-venv, imported locally, where no registry is)
#   deploy/wheels/  wheels to install from without network when it holds any (the container test fills
#          it with the project's wheel and its dependencies); empty: pip builds from source with PyPI
ARG BASE=python:3.11-slim
FROM ${BASE} AS build
WORKDIR /src
COPY pyproject.toml hatch_build.py README.md ./
COPY protos ./protos
COPY tools ./tools
COPY holistic ./holistic
COPY gateway ./gateway
COPY metric_services ./metric_services
COPY clients/python ./clients/python
COPY clients/web/holistic_dashboard ./clients/web/holistic_dashboard
COPY deploy/wheels /wheels
RUN python3 -m venv /opt/holistic \
 && if ls /wheels/*.whl >/dev/null 2>&1; then \
      /opt/holistic/bin/pip install --no-cache-dir --no-index --find-links /wheels "holistic-eval[semantic]"; \
    else \
      /opt/holistic/bin/pip install --no-cache-dir ".[semantic]"; \
    fi

FROM ${BASE}
RUN useradd --system --uid 10001 holistic
COPY --from=build /opt/holistic /opt/holistic
USER holistic
ENV PYTHONUNBUFFERED=1 PATH=/opt/holistic/bin:$PATH
ENTRYPOINT ["holistic"]
CMD ["--help"]
