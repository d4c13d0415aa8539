#!/bin/sh
echo helper
