package floe.compat;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import java.util.List;
import javax.enterprise.inject.Produces;
import javax.inject.Singleton;

/**
 * The list of the registry's run-time-changeable ("dynamic") config properties, which a Quarkus
 * extension of Apicurio's normally builds at build time; that extension's deployment artifact
 * is not on Maven Central, so it is left out (pom.xml) and the list is empty: every property
 * keeps the value it was started with, which is all the floe tests need.
 */
public class DynamicConfigIndex {
    @Produces
    @Singleton
    DynamicConfigPropertyList dynamicConfigProperties() {
        return new DynamicConfigPropertyList(List.of());
    }
}
