find scripts -type f -name '*.sh' -exec chmod a+x {} +
