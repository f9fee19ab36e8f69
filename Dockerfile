# One image for every holistic process; docker-compose.yml picks the command.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml hatch_build.py README.md ./
COPY protos ./protos
COPY tools ./tools
COPY holistic ./holistic
COPY gateway ./gateway
COPY metric_services ./metric_services
COPY clients/python ./clients/python
COPY clients/web/holistic_dashboard ./clients/web/holistic_dashboard
RUN pip wheel --no-cache-dir --wheel-dir /wheels ".[semantic]"

FROM python:3.11-slim
RUN useradd --system --uid 10001 holistic
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
USER holistic
ENV PYTHONUNBUFFERED=1
ENTRYPOINT ["holistic"]
CMD ["--help"]
