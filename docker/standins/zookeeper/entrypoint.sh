#!/bin/bash
# A stand-in for the official image's entry point: a standalone server on
# 2181 with its data in /data and /datalog, 4lw commands as allowed.
set -eu
cat > /conf/zoo.cfg <<CFG
tickTime=2000
initLimit=10
syncLimit=5
dataDir=/data
dataLogDir=/datalog
clientPort=2181
maxClientCnxns=120
admin.enableServer=false
4lw.commands.whitelist=${ZOO_4LW_COMMANDS_WHITELIST:-srvr}
CFG
printf 'log4j.rootLogger=WARN, CONSOLE\nlog4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender\nlog4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout\nlog4j.appender.CONSOLE.layout.ConversionPattern=%%d %%-5p [%%c{1}] %%m%%n\n' > /conf/log4j.properties
chown -R zookeeper:zookeeper /data /datalog
# The server jar's manifest brings its dependencies; one slf4j binding is
# named, since /usr/share/java holds several (and one that aborts the JVM).
exec setpriv --reuid=zookeeper --regid=zookeeper --init-groups \
  java -Xmx256m -Djava.net.preferIPv4Stack=true -Dlog4j.configuration=file:/conf/log4j.properties \
  -Dzookeeper.admin.enableServer=false \
  -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar \
  org.apache.zookeeper.server.quorum.QuorumPeerMain /conf/zoo.cfg
